// What a mission's briefings got right, without a judge: the planted findings are figures and
// names that appear nowhere else, so finding one in the text (written any of the ways the
// mission allows, after normalizing) means the team found it; a decoy's figure means the team
// repeated a claim the sources contradict.
import type { Mission } from "./missions";
import { pagePath } from "./web";

export type Briefing = { title: string; summary: string; content: string };

export type MissionScore = {
  findings: { id: string; found: boolean; sourced: boolean }[];
  decoys: { id: string; repeated: boolean }[];
  found: number;
  sourced: number;
  repeated: number;
  /**
   * 0–100: a sourced finding counts 1, one without its source ½, each decoy repeated −1,
   * out of the mission's findings (never below 0).
   */
  score: number;
};

/**
 * Lower case; thousands separators, markup and the comma before a year dropped; currency signs
 * as codes (€ → eur); "per cent" as %; dashes as "-"; one space between words.
 */
export function normalize(text: string): string {
  let out = text.normalize("NFKC").toLowerCase();
  out = out.replace(/[*_`]/g, "").replace(/[\u2010-\u2015\u2212]/g, "-");
  out = out
    .replace(/€\s*/g, " eur ")
    .replace(/£\s*/g, " gbp ")
    .replace(/(?:us)?\$\s*/g, " usd ");
  for (let before = ""; before !== out; ) {
    before = out;
    out = out.replace(/(\d)[,\u00a0\u202f\u2009'](\d{3})(?!\d)/g, "$1$2");
  }
  out = out.replace(/\s*(?:per ?cent|percent)\b/g, "%").replace(/\s+%/g, "%");
  out = out.replace(/,(?=\s)/g, "");
  return out.replace(/\s+/g, " ").trim();
}

/** Whether `text` (normalized) holds `phrase` (normalized) as whole words: "4.37 million" is not in "14.37 million". */
export function mentions(text: string, phrase: string): boolean {
  const wanted = normalize(phrase);
  for (let at = text.indexOf(wanted); at !== -1; at = text.indexOf(wanted, at + 1)) {
    const before = text[at - 1] ?? " ";
    const after = text.slice(at + wanted.length, at + wanted.length + 2);
    if (/[\p{L}\p{N}.]/u.test(before)) continue;
    if (/^[\p{L}\p{N}]/u.test(after) || /^\.\d/.test(after)) continue;
    return true;
  }
  return false;
}

/** The corpus pages a text links to, by path. */
export function citedPages(text: string): Set<string> {
  const urls = text.match(/https?:\/\/[^\s)\]>"'<]+/g) ?? [];
  return new Set(urls.map((url) => pagePath(url.replace(/[.,;:!?]+$/, ""))));
}

export function scoreMission(mission: Mission, briefings: readonly Briefing[]): MissionScore {
  const read = briefings.map((briefing) => {
    const raw = [briefing.title, briefing.summary, briefing.content].join("\n\n");
    return { text: normalize(raw), cited: citedPages(raw) };
  });
  const findings = mission.findings.map((finding) => {
    const holding = read.filter((briefing) => finding.match.some((phrase) => mentions(briefing.text, phrase)));
    return {
      id: finding.id,
      found: holding.length > 0,
      // The briefing that says it also links a page that says it.
      sourced: holding.some((briefing) => finding.sources.some((source) => briefing.cited.has(source))),
    };
  });
  const decoys = mission.decoys.map((decoy) => ({
    id: decoy.id,
    repeated: read.some((briefing) => decoy.match.some((phrase) => mentions(briefing.text, phrase))),
  }));
  const found = findings.filter((finding) => finding.found).length;
  const sourced = findings.filter((finding) => finding.sourced).length;
  const repeated = decoys.filter((decoy) => decoy.repeated).length;
  const points = sourced + (found - sourced) / 2 - repeated;
  return {
    findings,
    decoys,
    found,
    sourced,
    repeated,
    score: Math.round((100 * Math.max(0, points)) / mission.findings.length),
  };
}
