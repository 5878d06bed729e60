// Commands that rewrite the user's fusion_switch.cfg ask first (issue 15), in a modal dialog.
// The question is built here (pure, unit-tested); extension.js shows it from the executeCommand
// middleware. Arguments carrying `confirmed: true` (a script or test that already asked) skip it.
'use strict';

const QUESTIONS = Object.freeze({
  'fusionSwitch.allOff': {
    message: 'Switch all fusion off in {file}?',
    detail:
      'Both sections become "ALL": "off". The current text is saved first; ' +
      "'Restore Configuration' brings it back byte for byte.",
    action: 'Switch All Off',
  },
  'fusionSwitch.applySuspects': {
    message: 'Turn the suspected rules off in {file}?',
    detail: 'Each rule the last comparison blamed gets "off" in this file (undo works as usual).',
    action: 'Turn Off',
  },
});

/**
 * @param {string} command
 * @param {unknown[]} args  the arguments after commandArguments (first is {cfgUri, ...})
 * @returns {{message: string, detail: string, action: string} | undefined}
 */
function confirmationFor(command, args) {
  const question = QUESTIONS[command];
  const first = args[0];
  if (!question || (first && typeof first === 'object' && first.confirmed === true)) {
    return undefined;
  }
  const uri = first && typeof first === 'object' && typeof first.cfgUri === 'string' ? first.cfgUri : '';
  const file = uri ? decodeURIComponent(uri.split('/').pop()) : 'the active configuration';
  return { ...question, message: question.message.replace('{file}', file) };
}

module.exports = { confirmationFor, CONFIRMED_COMMANDS: Object.keys(QUESTIONS) };
