/**
 * A count with its noun, agreeing in number: "1 model", "3 models", "1,200 entries" (client-safe).
 * `many` for nouns that do not just take an s ("entry", "entries").
 */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count.toLocaleString("en-US")} ${count === 1 ? one : many}`;
}
