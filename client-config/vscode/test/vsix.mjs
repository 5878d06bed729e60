// Reads a .vsix (a zip file) without extra packages: entry names, sizes and contents.
import { readFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';

const END_OF_CENTRAL_DIRECTORY = Buffer.from([0x50, 0x4b, 0x05, 0x06]);

/** @returns {{name: string, size: number, read: () => Buffer}[]} */
export function readVsix(path) {
  const zip = readFileSync(path);
  const end = zip.lastIndexOf(END_OF_CENTRAL_DIRECTORY);
  if (end < 0) {
    throw new Error(`${path}: not a zip file (no end of central directory)`);
  }
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const entries = [];
  for (let i = 0; i < count; i++) {
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const skip = nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    const read = () => {
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const raw = zip.subarray(start, start + compressed);
      return method === 8 ? inflateRawSync(raw) : Buffer.from(raw);
    };
    entries.push({ name, size, read });
    at += 46 + skip;
  }
  return entries;
}

// `node test/vsix.mjs FILE.vsix [ENTRY]`: list the entries, or print one entry's bytes.
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const [file, wanted] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node test/vsix.mjs FILE.vsix [ENTRY]');
    process.exit(2);
  }
  const entries = readVsix(file);
  if (wanted) {
    const entry = entries.find((e) => e.name === wanted);
    if (!entry) {
      console.error(`${file}: no entry ${wanted}`);
      process.exit(1);
    }
    process.stdout.write(entry.read());
  } else {
    for (const entry of entries) {
      console.log(`${entry.size}\t${entry.name}`);
    }
  }
}
