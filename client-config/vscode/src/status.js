// Text of the status bar item, from the server's `fusionSwitch/status` notification
// ({target, catalogue, files: [{uri, suspects, proven}]}: the comparison counts of each open
// configuration) or, before it arrives, from the fusionSwitch.target setting.
'use strict';

/** A display name for a target or catalogue sent as a string or a small object. */
function label(value) {
  if (typeof value === 'string') {
    return value.trim();
  }
  if (value && typeof value === 'object') {
    for (const key of ['given', 'name', 'product', 'id']) {
      if (typeof value[key] === 'string' && value[key].trim() !== '') {
        return value[key].trim();
      }
    }
  }
  return '';
}

/** The counts of the file `uri` in the status, if the server sent any for it: a comparison
 * belongs to the configuration it was made for (a review: model A's count showed on B). */
function countsOf(status, uri) {
  const files = status && Array.isArray(status.files) ? status.files : [];
  return files.find((entry) => entry && typeof entry === 'object' && entry.uri === uri);
}

/**
 * @param {{target?: unknown, catalogue?: unknown, files?: unknown} | undefined} status
 * @param {string} configuredTarget  fusionSwitch.target of the active document's folder
 * @param {string} [uri]  the active configuration's URI
 * @returns {{text: string, tooltip: string}}
 */
function statusText(status, configuredTarget, uri) {
  const target = label(status ? status.target : undefined) || label(configuredTarget);
  const catalogue = label(status ? status.catalogue : undefined);
  const counts = countsOf(status, uri);
  const suspects = counts && Number.isInteger(counts.suspects) ? counts.suspects : undefined;
  // of them proven by replay; the rest are labelled guesses
  const proven =
    counts && Number.isInteger(counts.proven) ? Math.min(counts.proven, suspects ?? 0) : undefined;
  let text = `$(circuit-board) ${target || 'no target'}`;
  if (suspects !== undefined && suspects > 0) {
    if (proven === undefined) {
      text += ` $(warning) ${suspects}`;
    } else {
      if (proven > 0) {
        text += ` $(warning) ${proven}`;
      }
      if (suspects > proven) {
        text += ` $(question) ${suspects - proven}`;
      }
    }
  }
  const lines = [
    `Fusion Switch target: ${target || 'none (set fusionSwitch.target)'}`,
    `Catalogue: ${catalogue || (status ? 'unknown' : 'waiting for the server')}`,
  ];
  if (suspects !== undefined && proven !== undefined) {
    lines.push(
      `Suspected rules from the last comparison: ${suspects} ` +
        `(${proven} proven by replay, ${suspects - proven} not proven)`
    );
  } else if (suspects !== undefined) {
    lines.push(`Suspected rules from the last comparison: ${suspects}`);
  }
  lines.push('Click to select the target.');
  return { text, tooltip: lines.join('\n') };
}

module.exports = { label, statusText, countsOf };
