// `npm run db:migrate`: applies drizzle/ to DATABASE_DIRECT_URL when it is set (a migration
// needs a session: behind a transaction pooler DATABASE_URL does not keep one), else DATABASE_URL.
import { migrateDatabase, redactUrl } from "../src/lib/db/migrate";

const url = process.env.DATABASE_DIRECT_URL?.trim() || process.env.DATABASE_URL?.trim();
if (!url) {
  console.error(
    "DATABASE_URL is not set. Set it to the database to migrate, e.g. postgres://postgres@127.0.0.1:5432/cadre",
  );
  process.exit(1);
}
try {
  await migrateDatabase(url);
  console.log(`Migrations applied to ${redactUrl(url)}.`);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
}
