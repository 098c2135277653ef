export * from "./agents";
export * from "./conversations";
export * from "./inbox-items";
export * from "./knowledge-items";
export * from "./messages";
export * from "./tasks";
export * from "./teams";
export * from "./usage";
