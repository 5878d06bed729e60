// The training step, rank or iteration a comparison needs named (a review: the editor was told
// to "pass --rank R", which it cannot). The server answers `{error, choose: {rank: ["0", "1"]}}`
// when the dump folders hold several and lists the values dumped on both sides; the extension
// asks with a quick pick and runs the comparison again with the one picked (the argument
// `step`, `rank` or `iteration`, over fusionSwitch.compare.step / .rank / .iteration). Pure
// parts, unit-tested.
'use strict';

const KEYS = Object.freeze(['step', 'rank', 'iteration']);
const WHAT = Object.freeze({
  step: 'training step',
  rank: 'rank (device id, or folders/device id)',
  iteration: 'iteration',
});

/**
 * What the answer asks to choose, if anything.
 * @param {unknown} result  the compare command's answer
 * @returns {{key: string, values: string[]} | undefined}
 */
function pendingChoice(result) {
  const choose = result && typeof result === 'object' ? result.choose : undefined;
  if (!choose || typeof choose !== 'object') {
    return undefined;
  }
  for (const key of KEYS) {
    const values = choose[key];
    if (Array.isArray(values) && values.length > 0 && values.every((v) => typeof v === 'string')) {
      return { key, values };
    }
  }
  return undefined;
}

/** The quick pick's title and items for a choice. */
function choiceQuestion({ key, values }) {
  const what = WHAT[key] ?? key;
  return {
    title: `Fusion Switch: the dumps hold several; compare which ${what}?`,
    placeHolder: `Set fusionSwitch.compare.${key} to skip this question`,
    items: values.map((value) => ({ label: value, description: value === 'all' ? 'every iteration (statistics)' : '' })),
  };
}

/** The command's arguments with the value picked (its first argument is the object). */
function withChoice(args, key, value) {
  const first = args[0] && typeof args[0] === 'object' ? args[0] : {};
  return [{ ...first, [key]: value }, ...args.slice(1)];
}

module.exports = { choiceQuestion, pendingChoice, withChoice };
