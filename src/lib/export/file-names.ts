import "server-only";
import type { Team } from "@/lib/db/schema";

/**
 * `cadre-<team name>-<what>.<extension>`, the name reduced to lowercase ASCII letters, digits
 * and dashes (accents dropped, a few letters spelled out): safe in every file system and in a
 * Content-Disposition header as it is.
 */
export function exportFileName(team: Pick<Team, "name">, what: string, extension: "json" | "md"): string {
  const slug = team.name
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .replace(/[øØ]/g, "o")
    .replace(/[æÆ]/g, "ae")
    .replace(/ß/g, "ss")
    .replace(/[łŁ]/g, "l")
    .replace(/[^A-Za-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .toLowerCase()
    .slice(0, 60)
    .replace(/-+$/, "");
  return `cadre-${slug || "team"}-${what}.${extension}`;
}

/** A download's headers: the file name, and no cache (a record is as of the moment it was asked for). */
export function attachmentHeaders(fileName: string, contentType: string): HeadersInit {
  return {
    "content-type": contentType,
    "content-disposition": `attachment; filename="${fileName}"`,
    "cache-control": "no-store",
  };
}
