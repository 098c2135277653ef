import { readFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";

const pagePath = z.string().regex(/^\/[a-z0-9-]+\/[a-z0-9-]+$/, "a corpus page's path, such as /site/page");

const findingSchema = z.strictObject({
  id: z.string().min(1),
  /** What the finding says, for people reading the report. */
  what: z.string().min(1),
  /** The ways a briefing may write it, any one of which counts (see normalize in score.ts). */
  match: z.array(z.string().min(1)).min(1),
  /** The pages that are a correct source for it. */
  sources: z.array(pagePath).min(1),
});

const decoySchema = z.strictObject({
  id: z.string().min(1),
  what: z.string().min(1),
  match: z.array(z.string().min(1)).min(1),
  /** The page that makes the claim. */
  source: pagePath,
});

const missionSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9-]+$/),
  /** The team's name and mission, as the person would create it. */
  team: z.string().min(1),
  mission: z.string().min(1),
  /** The person's message to the lead that starts the work. */
  message: z.string().min(1),
  findings: z.array(findingSchema).min(1),
  decoys: z.array(decoySchema),
});

export type Mission = z.infer<typeof missionSchema>;

const MISSIONS_FILE = path.join(import.meta.dirname, "..", "missions.json");

/** The missions in eval/missions.json; every page they name must be in the corpus. */
export async function loadMissions(corpusPaths: ReadonlySet<string>, file = MISSIONS_FILE): Promise<Mission[]> {
  const parsed = z.object({ missions: z.array(missionSchema).min(1) }).parse(JSON.parse(await readFile(file, "utf8")));
  for (const mission of parsed.missions) {
    const named = [
      ...mission.findings.flatMap((finding) => finding.sources),
      ...mission.decoys.map((decoy) => decoy.source),
    ];
    const missing = named.filter((page) => !corpusPaths.has(page));
    if (missing.length > 0)
      throw new Error(`Mission ${mission.id} names pages the corpus lacks: ${missing.join(", ")}`);
  }
  return parsed.missions;
}
