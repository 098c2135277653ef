import type { Db } from "@/lib/db/client";
import { createSubordinate } from "@/lib/db/queries/agents";
import { createTeamWithLead } from "@/lib/db/queries/teams";

let counter = 0;

/** A team with its lead and, optionally, subordinates: the smallest world most tests need. */
export async function createTeamFixture(db: Db, options: { subordinates?: string[]; name?: string } = {}) {
  counter += 1;
  const { team, lead } = await createTeamWithLead(db, {
    name: options.name ?? `Team ${counter}`,
    mission: "Track what matters in the field and brief the person.",
    leadInstructions: "You lead the team.",
  });
  const subordinates = [];
  for (const name of options.subordinates ?? []) {
    subordinates.push(await createSubordinate(db, team.id, { name, instructions: `You are ${name}.` }));
  }
  return { team, lead, subordinates };
}
