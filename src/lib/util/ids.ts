import "server-only";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a uuid: pages answer 404 for anything else without asking the database. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
