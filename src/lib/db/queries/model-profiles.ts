import "server-only";
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../client";
import { modelProfiles, type ModelProfile } from "../schema";

/** Which model on which server: a profile's key. */
export type ModelOnServer = { model: string; baseUrl: string };

export type NewModelProfile = Omit<ModelProfile, "checkedAt">;

/** The profile of one model on one server; null when it was never checked there. */
export async function getModelProfile(db: Db, { model, baseUrl }: ModelOnServer): Promise<ModelProfile | null> {
  const [row] = await db
    .select()
    .from(modelProfiles)
    .where(and(eq(modelProfiles.model, model), eq(modelProfiles.baseUrl, baseUrl)));
  return row ?? null;
}

/** The profiles of several models on one server (a page's models in use); those never checked are missing. */
export function listModelProfiles(db: Db, baseUrl: string, models: readonly string[]): Promise<ModelProfile[]> {
  if (models.length === 0) return Promise.resolve([]);
  return db
    .select()
    .from(modelProfiles)
    .where(and(eq(modelProfiles.baseUrl, baseUrl), inArray(modelProfiles.model, [...models])));
}

/** Stores what a check found, replacing the last check of that model on that server. */
export async function saveModelProfile(db: Db, profile: NewModelProfile): Promise<ModelProfile> {
  const { model, baseUrl, ...found } = profile;
  const [row] = await db
    .insert(modelProfiles)
    .values({ ...profile, checkedAt: sql`now()` })
    .onConflictDoUpdate({
      target: [modelProfiles.model, modelProfiles.baseUrl],
      set: { ...found, checkedAt: sql`now()` },
    })
    .returning();
  return row!;
}
