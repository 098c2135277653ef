import type { MetadataRoute } from "next";

/** The web manifest: a home-screen shortcut gets the app's name and icon (the files beside this one). */
export default function manifest(): MetadataRoute.Manifest {
  return {
    name: "Cadre",
    short_name: "Cadre",
    description: "Teams of LLM agents that keep working while you are away.",
    start_url: "/",
    display: "standalone",
    background_color: "#fafaf9",
    theme_color: "#4f46e5",
    icons: [
      { src: "/icon.svg", sizes: "any", type: "image/svg+xml" },
      { src: "/apple-icon.png", sizes: "180x180", type: "image/png" },
    ],
  };
}
