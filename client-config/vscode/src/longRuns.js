// The server's long commands, comparison and bisection, as the extension shows them: a
// notification with a Cancel button (vscode-languageclient shows work-done progress in the
// status bar only, with none), and a restart of the server, which would stop them, asked
// about first (a review: a change of fusionSwitch.server.* killed a running bisection without
// a word). Pure parts, unit-tested.
'use strict';

const LONG_RUNS = Object.freeze({
  'fusionSwitch.compare': {
    kind: 'comparison',
    title: 'Fusion Switch: comparing fusion on vs off',
    cancel: 'fusionSwitch.cancelCompare',
  },
  'fusionSwitch.bisect': {
    kind: 'bisection',
    title: 'Fusion Switch: bisecting fusion rules by re-running your job',
    cancel: 'fusionSwitch.cancelBisect',
  },
});

/**
 * What to ask before restarting the server while long commands run (undefined: none runs).
 * @param {string[]} kinds  the kinds running ('comparison', 'bisection')
 */
function restartQuestion(kinds) {
  if (!kinds.length) {
    return undefined;
  }
  const what = kinds.length > 1 ? `a ${kinds.join(' and a ')} are running` : `a ${kinds[0]} is running`;
  return {
    message: `Fusion Switch: ${what}; restart the language server for its new settings now?`,
    detail:
      'Restarting the server stops it: a comparison publishes nothing, a bisection puts the ' +
      'configuration back (run it again with resume). Otherwise the server restarts with the ' +
      'new settings when it ends.',
    now: 'Restart Now',
    later: 'When It Ends',
  };
}

module.exports = { LONG_RUNS, restartQuestion };
