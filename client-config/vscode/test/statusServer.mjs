// A minimal stdio language server for the activation test: answers initialize and, once the
// client says `initialized`, sends `fusionSwitch/status` if the client announced it in
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
  return { capabilities: {}, serverInfo: { name: 'status-test-server' } };
});
connection.onNotification('initialized', () => {
  const silent = process.argv.includes('--silent');
  if (!silent && experimental?.fusionSwitch?.statusNotification === 'fusionSwitch/status') {
    connection.sendNotification('fusionSwitch/status', {
      target: 'Atlas 350 (Ascend950PR_9599)',
      catalogue: '674 rules from built-in',
      suspects: 2,
    });
  }
});
connection.onRequest('shutdown', () => null);
connection.onNotification('exit', () => process.exit(0));
connection.listen();
