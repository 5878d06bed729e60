// The comparison's HTML report in a remote window (a review: over Remote-SSH the server's
// window/showDocument {external: true} went to env.openExternal, which opened the remote path
// in the local browser, where it does not exist, and answered success). There the extension
// reads the report through workspace.fs (on the remote host) and shows it in a webview with a
// Content-Security-Policy that lets nothing load or run. Pure parts, unit-tested.
'use strict';

/** Nothing but the report's own inline styles and inline images; no script runs. */
const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:;";

/**
 * Whether a window/showDocument is a report this extension shows itself: an external
 * file: HTML page, asked for in a remote (Remote-SSH, WSL, containers) or browser window, where
 * the local browser cannot open the extension host's files.
 * @param {{uri?: unknown, external?: unknown}} params
 * @param {{remoteName?: string, web?: boolean}} where
 */
function showsReportHere(params, { remoteName, web }) {
  const uri = params && typeof params.uri === 'string' ? params.uri : '';
  return Boolean(
    params && params.external === true && uri.startsWith('file:') && /\.html?$/i.test(uri) && (remoteName || web),
  );
}

/** The report's HTML with the policy first in its head (a meta tag placed later does not
 * govern what comes before it). */
function withReportPolicy(html) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">`;
  const head = /<head[^>]*>/i.exec(html);
  if (head) {
    const at = head.index + head[0].length;
    return html.slice(0, at) + meta + html.slice(at);
  }
  return `<!DOCTYPE html><html><head>${meta}</head><body>${html}</body></html>`;
}

module.exports = { REPORT_CSP, showsReportHere, withReportPolicy };
