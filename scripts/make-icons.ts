// Draws Cadre's icon (src/app/icon.svg's ◆ on the accent colour) as the PNG and ICO files that
// browsers ask for without reading the SVG: /favicon.ico (16, 32, 48 px) and the
// apple-touch icon (180 px, square: iOS rounds the corners itself). Run after changing the mark:
//   node --import tsx scripts/make-icons.ts
import { writeFileSync } from "node:fs";
import path from "node:path";
import { deflateSync } from "node:zlib";

const ACCENT = [0x4f, 0x46, 0xe5];
const WHITE = [0xff, 0xff, 0xff];
const root = path.resolve(import.meta.dirname, "..");

/** The colour at a point of the 64-unit design, or null outside the (rounded) square. */
function sample(x: number, y: number, rounded: boolean): number[] | null {
  if (rounded) {
    const r = 14;
    const cx = Math.min(Math.max(x, r), 64 - r);
    const cy = Math.min(Math.max(y, r), 64 - r);
    if ((x - cx) ** 2 + (y - cy) ** 2 > r * r) return null;
  }
  return Math.abs(x - 32) + Math.abs(y - 32) <= 21 ? WHITE : ACCENT;
}

/** RGBA pixels, 4×4 samples per pixel for smooth edges. */
function draw(size: number, rounded: boolean): Buffer {
  const pixels = Buffer.alloc(size * size * 4);
  const n = 4;
  for (let py = 0; py < size; py++) {
    for (let px = 0; px < size; px++) {
      let r = 0,
        g = 0,
        b = 0,
        a = 0;
      for (let sy = 0; sy < n; sy++) {
        for (let sx = 0; sx < n; sx++) {
          const colour = sample(((px + (sx + 0.5) / n) / size) * 64, ((py + (sy + 0.5) / n) / size) * 64, rounded);
          if (!colour) continue;
          r += colour[0]!;
          g += colour[1]!;
          b += colour[2]!;
          a += 1;
        }
      }
      const at = (py * size + px) * 4;
      if (a > 0)
        pixels.set([Math.round(r / a), Math.round(g / a), Math.round(b / a), Math.round((a / (n * n)) * 255)], at);
    }
  }
  return pixels;
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}
function png(size: number, rounded: boolean): Buffer {
  const pixels = draw(size, rounded);
  const rows = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) pixels.copy(rows, y * (size * 4 + 1) + 1, y * size * 4, (y + 1) * size * 4);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
/** An ICO holding PNG images (every browser since IE 11 reads them). */
function ico(sizes: number[]): Buffer {
  const images = sizes.map((size) => png(size, true));
  const head = Buffer.alloc(6 + 16 * sizes.length);
  head.writeUInt16LE(0, 0);
  head.writeUInt16LE(1, 2);
  head.writeUInt16LE(sizes.length, 4);
  let offset = head.length;
  sizes.forEach((size, index) => {
    const at = 6 + index * 16;
    head.writeUInt8(size % 256, at);
    head.writeUInt8(size % 256, at + 1);
    head.writeUInt16LE(1, at + 4); // colour planes
    head.writeUInt16LE(32, at + 6); // bits per pixel
    head.writeUInt32LE(images[index]!.length, at + 8);
    head.writeUInt32LE(offset, at + 12);
    offset += images[index]!.length;
  });
  return Buffer.concat([head, ...images]);
}

writeFileSync(path.join(root, "src/app/favicon.ico"), ico([16, 32, 48]));
writeFileSync(path.join(root, "src/app/apple-icon.png"), png(180, false));
console.log("wrote src/app/favicon.ico and src/app/apple-icon.png");
