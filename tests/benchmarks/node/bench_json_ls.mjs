// Reference figures for bench_cfg.py: vscode-json-languageservice (the engine of VS Code's own
// JSON support) validating and completing the same document with the same JSON Schema.
// Usage: node bench_json_ls.mjs DOCUMENT SCHEMA OFFSET RUNS  → one JSON line on stdout.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { getLanguageService } from 'vscode-json-languageservice';
import { TextDocument } from 'vscode-languageserver-textdocument';

const [docPath, schemaPath, offsetArg, runsArg] = process.argv.slice(2);
const text = readFileSync(docPath, 'utf8');
const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
const offset = Number(offsetArg);
const runs = Number(runsArg || 20);

const service = getLanguageService({});
service.configure({
  validate: true,
  allowComments: false,
  schemas: [{ uri: 'file:///fusion_switch.schema.json', fileMatch: ['*.cfg'], schema }],
});
const doc = TextDocument.create('file:///bench/fusion_switch.cfg', 'json', 1, text);
const strict = { comments: 'error', trailingCommas: 'error' };

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function validateOnce() {
  const t0 = performance.now();
  const parsed = service.parseJSONDocument(doc);
  const diagnostics = await service.doValidation(doc, parsed, strict);
  return [performance.now() - t0, diagnostics.length, parsed];
}

let [, diagnosticCount, parsed] = await validateOnce(); // warm-up: compiles the schema
const validateTimes = [];
for (let i = 0; i < runs; i++) {
  const [ms, n] = await validateOnce();
  validateTimes.push(ms);
  diagnosticCount = n;
}

const position = doc.positionAt(offset);
let items = 0;
await service.doComplete(doc, position, parsed); // warm-up
const completeTimes = [];
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const list = await service.doComplete(doc, position, parsed);
  completeTimes.push(performance.now() - t0);
  items = list ? list.items.length : 0;
}

process.stdout.write(JSON.stringify({
  validate_ms: median(validateTimes),
  complete_ms: median(completeTimes),
  diagnostics: diagnosticCount,
  completion_items: items,
  runs,
}) + '\n');
