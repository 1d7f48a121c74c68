/** What the figures were taken on: CPU, Node, SQLite, the temp directory's file system and its fsync cost. */
import { closeSync, fdatasyncSync, openSync, readFileSync, realpathSync, writeSync } from 'node:fs';
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { now, tempDir } from './common.js';

/** The machine section of the results. */
export interface MachineInfo {
  /** The CPU model as the OS names it, with vendor, family, model and stepping (a VM often hides the full name). */
  cpu: string;
  cores: number;
  memoryGb: number;
  os: string;
  node: string;
  sqlite: string;
  loadAverage: number[];
  /** Load average when the run ended (set by run.ts). */
  loadAverageEnd?: number[];
  tempDir: string;
  fileSystem: string;
  /** Median cost of a 4 KiB write + fdatasync in the temp directory, µs. */
  fsyncUs: number;
  diskNote: string;
}

/** The mount holding `path` (longest matching mount point in /proc/mounts). */
function fileSystemOf(path: string): string {
  try {
    const real = realpathSync(path);
    let best = { point: '', text: 'unknown' };
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [device, point, type] = line.split(' ');
      if (!device || !point || !type) continue;
      if ((real === point || real.startsWith(point.endsWith('/') ? point : `${point}/`)) && point.length >= best.point.length) {
        best = { point, text: `${type} on ${point} (${device})` };
      }
    }
    return best.text;
  } catch {
    return 'unknown';
  }
}

/** AMD families by microarchitecture (a hypervisor often reports only "AMD EPYC"). */
const AMD_FAMILIES: Record<number, string> = { 23: 'Zen/Zen 2', 25: 'Zen 3/Zen 4', 26: 'Zen 5' };

/** The CPU model plus what /proc/cpuinfo says of it: vendor, family/model/stepping, microarchitecture. */
function cpuName(model: string): string {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(info)?.[1]?.trim();
    const vendor = field('vendor_id');
    const family = Number(field('cpu family'));
    const arch = vendor === 'AuthenticAMD' ? AMD_FAMILIES[family] : undefined;
    const mhz = field('cpu MHz');
    return `${model} (${[vendor, `family ${family} model ${field('model')} stepping ${field('stepping')}`, arch, mhz ? `${Math.round(Number(mhz))} MHz` : undefined].filter(Boolean).join(', ')})`;
  } catch {
    return model;
  }
}

/** Times `rounds` 4 KiB write + fdatasync pairs; the median, µs. */
export function probeFsync(base: string | undefined, rounds = 100): number {
  const tmp = tempDir(base, 'spool-fsync-');
  try {
    const fd = openSync(join(tmp.dir, 'probe'), 'w');
    const block = Buffer.alloc(4096, 7);
    const times: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const t0 = now();
      writeSync(fd, block, 0, block.length, (i % 16) * 4096);
      fdatasyncSync(fd);
      times.push((now() - t0) * 1000);
    }
    closeSync(fd);
    times.sort((a, b) => a - b);
    return times[times.length >> 1]!;
  } finally {
    tmp.cleanup();
  }
}

/** Collects the machine section (takes ~0.1–1 s for the fsync probe). */
export function machineInfo(base: string | undefined): MachineInfo {
  const cpuList = cpus();
  const db = new Database(':memory:');
  const sqlite = db.prepare('SELECT sqlite_version()').pluck().get() as string;
  db.close();
  const dir = base ?? tmpdir();
  const fsyncUs = probeFsync(base);
  const diskNote =
    fsyncUs < 200
      ? `fsync is nearly free here (${fsyncUs.toFixed(0)} µs): 'full' figures are flattered; on a disk where fsync costs ~1–10 ms, every system's full figures fall toward (commits/s × messages per commit)`
      : `fsync costs ${(fsyncUs / 1000).toFixed(2)} ms here: 'full' figures are bounded by commits per second`;
  return {
    cpu: cpuName(cpuList[0]?.model ?? 'unknown'),
    cores: cpuList.length,
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${platform()} ${release()}`,
    node: process.version,
    sqlite,
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
    tempDir: dir,
    fileSystem: fileSystemOf(dir),
    fsyncUs: Math.round(fsyncUs),
    diskNote,
  };
}
