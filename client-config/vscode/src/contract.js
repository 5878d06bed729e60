// What the extension itself owns, as opposed to what the language server provides.
// The consistency test (test/consistency.test.mjs) reads these lists: every other contributed
// command must be registered by the server and every other setting must be read by it.
'use strict';

/** Commands implemented in the extension (the server does not list them). */
const CLIENT_COMMANDS = Object.freeze([
  'fusionSwitch.selectTarget',
  'fusionSwitch.restartServer',
  'fusionSwitch.showOutput',
]);

/** Settings read only by the extension (how to start the server, protocol trace). */
const CLIENT_SETTINGS = Object.freeze([
  'fusionSwitch.server.command',
  'fusionSwitch.server.pythonPath',
  'fusionSwitch.trace.server',
]);

/** Custom notification the server may send: {target, catalogue, files: [{uri, suspects, proven}]}. */
const STATUS_NOTIFICATION = 'fusionSwitch/status';

const LANGUAGE_ID = 'fusion-switch';
const SECTION = 'fusionSwitch';

module.exports = { CLIENT_COMMANDS, CLIENT_SETTINGS, STATUS_NOTIFICATION, LANGUAGE_ID, SECTION };
