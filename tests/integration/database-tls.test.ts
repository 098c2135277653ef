// DATABASE_URL with sslmode=require and verify-full (the CA by sslrootcert= or PGSSLROOTCERT),
// against a Postgres of the test's own with ssl=on and a certificate the test makes (openssl):
// Cadre's queries, pg-boss, migrations, the start-up wait and a real worker all connect over TLS,
// and verify-full refuses a server whose certificate another CA signed.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type LocalPostgres } from "../../scripts/lib/embedded-postgres";
import { createDatabase } from "@/lib/db/client";
import { connectionTarget } from "@/lib/db/connection-target";
import { migrateDatabase } from "@/lib/db/migrate";
import { waitForDatabase } from "@/lib/db/wait";
import { JobQueue } from "@/lib/jobs/job-queue";
import { startWorkerProcess, waitFor } from "../support/worker-process";

const certs = mkdtempSync(path.join(os.tmpdir(), "cadre-tls-certs-"));
const dataDir = path.join(os.tmpdir(), `cadre-tls-${process.pid}`);
let server: LocalPostgres;
const ca = path.join(certs, "ca.crt");
const otherCa = path.join(certs, "other-ca.crt");

function openssl(...args: string[]) {
  execFileSync("openssl", args, { cwd: certs, stdio: "pipe" });
}

/** A CA, a server certificate it signed for localhost and 127.0.0.1, and a second CA that signed nothing here. */
function makeCertificates() {
  for (const name of ["ca", "other-ca"])
    openssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "2",
      "-subj",
      `/CN=Cadre test ${name}`,
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.crt`,
    );
  openssl(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=localhost",
    "-keyout",
    "server.key",
    "-out",
    "server.csr",
  );
  writeFileSync(path.join(certs, "san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  openssl(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    "san.ext",
    "-out",
    "server.crt",
  );
  chmodSync(certs, 0o755);
  chmodSync(path.join(certs, "server.key"), 0o600);
  // Postgres runs as the "postgres" user when the tests run as root: its key must be its own.
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    for (const file of ["server.key", "server.crt"]) chownSync(path.join(certs, file), uid, gid);
  }
}

beforeAll(async () => {
  makeCertificates();
  server = await startEmbeddedPostgres({
    dataDir,
    database: "cadre",
    persistent: false,
    settings: {
      ssl: "on",
      ssl_cert_file: path.join(certs, "server.crt"),
      ssl_key_file: path.join(certs, "server.key"),
    },
  });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(certs, { recursive: true, force: true });
});

function urlWith(host: string, parameters: Record<string, string>): string {
  const url = new URL(server.url);
  url.hostname = host;
  for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
  return url.toString();
}

/** Whether this connection is encrypted, as the server sees it. */
async function encrypted(sql: postgres.Sql): Promise<boolean> {
  const [row] = await sql<{ ssl: boolean }[]>`select ssl from pg_stat_ssl where pid = pg_backend_pid()`;
  return row?.ssl === true;
}

describe("TLS to the database", () => {
  it("reads sslmode and the CA as libpq does, and keeps them out of what the server is sent", () => {
    const target = connectionTarget(urlWith("localhost", { sslmode: "verify-full", sslrootcert: ca }));
    expect(target.url).not.toMatch(/ssl/);
    expect(target.ssl).toMatchObject({ rejectUnauthorized: true, servername: "localhost" });
    expect(connectionTarget(urlWith("localhost", { sslmode: "require" })).ssl).toEqual({ rejectUnauthorized: false });
    expect(
      connectionTarget(urlWith("localhost", {}), { PGSSLMODE: "verify-full", PGSSLROOTCERT: ca }).ssl,
    ).toMatchObject({
      rejectUnauthorized: true,
    });
    expect(() => connectionTarget(urlWith("localhost", { sslmode: "sometimes" }))).toThrow(/sslmode=sometimes/);
  });

  it("sslmode=require and verify-full: Cadre's queries, migrations and the wait go over TLS", {
    timeout: 60_000,
  }, async () => {
    for (const url of [
      urlWith("127.0.0.1", { sslmode: "require" }),
      urlWith("localhost", { sslmode: "verify-full", sslrootcert: ca }),
      urlWith("127.0.0.1", { sslmode: "verify-full", sslrootcert: ca }),
    ]) {
      await waitForDatabase(url, { log: () => {}, giveUpAfterSeconds: 10 });
      await migrateDatabase(url);
      const database = createDatabase(url, { max: 1 });
      try {
        expect(await encrypted(database.sql)).toBe(true);
      } finally {
        await database.close();
      }
    }
  });

  it("verify-full refuses a certificate another CA signed", async () => {
    const database = createDatabase(urlWith("localhost", { sslmode: "verify-full", sslrootcert: otherCa }), { max: 1 });
    try {
      await expect(database.sql`select 1`).rejects.toThrow(/certificate/i);
    } finally {
      await database.close();
    }
  });

  it("pg-boss over verify-full, and a real worker over it with the CA in PGSSLROOTCERT", {
    timeout: 90_000,
  }, async () => {
    const url = urlWith("localhost", { sslmode: "verify-full", sslrootcert: ca });
    const jobs = await JobQueue.start(url, "worker", { quiet: true, poolSize: 2 });
    const admin = postgres(server.url, { max: 1, onnotice: () => {} });
    try {
      await jobs.boss.send("agent-wake", { agentId: "00000000-0000-0000-0000-000000000000" });
      const rows = await admin<{ ssl: boolean }[]>`
        select s.ssl from pg_stat_activity a join pg_stat_ssl s using (pid) where a.application_name = 'pgboss'`;
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((row) => row.ssl)).toBe(true);
    } finally {
      await jobs.stop({ graceful: false, timeoutMs: 1_000 });
    }

    const worker = startWorkerProcess({
      DATABASE_URL: urlWith("localhost", { sslmode: "verify-full" }),
      PGSSLROOTCERT: ca,
    });
    try {
      await waitFor(async () => worker.output.join("").includes("[worker] ready") || worker.child.exitCode !== null, {
        timeoutMs: 60_000,
        what: "the worker to start",
      });
      expect(worker.output.join("")).toContain("[worker] ready");
      const [row] = await admin<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity a join pg_stat_ssl s using (pid)
        where a.datname = 'cadre' and a.backend_type = 'client backend' and not s.ssl and a.pid <> pg_backend_pid()`;
      expect(row?.n).toBe(0);
    } finally {
      await worker.stop("SIGKILL");
      await admin.end({ timeout: 1 });
    }
  });
});
