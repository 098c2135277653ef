import type { Metadata } from "next";
import { notFound } from "next/navigation";
import { findTeam } from "@/app/found";
import { requirePageSession } from "@/lib/auth/auth";
import type { Team } from "@/lib/db/schema";

export type TeamParams = { params: Promise<{ teamId: string }> };

/** The team a section page shows; an unknown or malformed id is the 404 page. */
export async function teamOr404(params: TeamParams["params"]): Promise<Team> {
  const team = await findTeam((await params).teamId);
  if (!team) notFound();
  return team;
}

/** "Settings · Solar" (the Overview is the team's name alone). */
export async function sectionMetadata(params: TeamParams["params"], section: string | null): Promise<Metadata> {
  await requirePageSession();
  const team = await findTeam((await params).teamId);
  if (!team) return { title: section ?? "Team" };
  return { title: section ? `${section} · ${team.name}` : team.name };
}
