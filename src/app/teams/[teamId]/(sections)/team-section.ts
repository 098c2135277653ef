import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { cache } from "react";
import { requirePageSession } from "@/lib/auth";
import { db } from "@/lib/db/client";
import { getTeam } from "@/lib/db/queries/teams";
import type { Team } from "@/lib/db/schema";
import { isUuid } from "@/lib/ids";

export type TeamParams = { params: Promise<{ teamId: string }> };

/** One read of the team per request, shared by the layout, the section page and its title. */
const loadTeam = cache(async (teamId: string): Promise<Team | null> => (isUuid(teamId) ? getTeam(db(), teamId) : null));

/** The team a section page shows; an unknown or malformed id is the 404 page. */
export async function teamOr404(params: TeamParams["params"]): Promise<Team> {
  const team = await loadTeam((await params).teamId);
  if (!team) notFound();
  return team;
}

/** "Settings · Solar" (the Overview is the team's name alone). */
export async function sectionMetadata(params: TeamParams["params"], section: string | null): Promise<Metadata> {
  await requirePageSession();
  const team = await loadTeam((await params).teamId);
  if (!team) return { title: section ?? "Team" };
  return { title: section ? `${section} · ${team.name}` : team.name };
}
