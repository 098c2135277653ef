import "server-only";
/**
 * Text as Postgres can store it: without NUL (text and jsonb refuse it) and with a lone
 * surrogate half replaced. A model can send either; refusing what it wrote would fail the
 * step on every retry, and the characters carry nothing a reader would miss. (What the
 * person sends with a NUL is refused with a 400 instead: see http.ts.)
 */
export function storable(text: string): string {
  return text
    .replaceAll("\u0000", "")
    .replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}
