// A minimal stdio language server for the activation test: answers initialize and, once the
// client says `initialized` (and for each opened document, with its counts), sends
// `fusionSwitch/status` if the client announced it in
// `capabilities.experimental.fusionSwitch.statusNotification`. `--silent`: never sends it.
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-jsonrpc/node';

const connection = createMessageConnection(
  new StreamMessageReader(process.stdin),
  new StreamMessageWriter(process.stdout),
);
let experimental;
connection.onRequest('initialize', (params) => {
  experimental = params.capabilities.experimental;
  return { capabilities: { textDocumentSync: 1 }, serverInfo: { name: 'status-test-server' } };
});
const status = (files) => ({
  target: 'Atlas 350 (Ascend950PR_9599)',
  catalogue: '674 rules from built-in',
  files,
});
const announced = () =>
  !process.argv.includes('--silent') && experimental?.fusionSwitch?.statusNotification === 'fusionSwitch/status';
connection.onNotification('initialized', () => {
  if (announced()) {
    connection.sendNotification('fusionSwitch/status', status([]));
  }
});
// as the server does: the counts of each open configuration with comparison results
connection.onNotification('textDocument/didOpen', ({ textDocument }) => {
  if (announced()) {
    connection.sendNotification('fusionSwitch/status', status([{ uri: textDocument.uri, suspects: 2 }]));
  }
});
connection.onRequest('shutdown', () => null);
connection.onNotification('exit', () => process.exit(0));
connection.listen();
