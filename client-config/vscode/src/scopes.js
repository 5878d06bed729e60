// Settings in a multi-root window (a review: the extension pushed the active folder's settings
// for the whole window, so folder B was checked with folder A's target and compared with A's
// paths). The server asks for each configuration's folder itself (`workspace/configuration`
// with the configuration's URI as `scopeUri`, answered by vscode-languageclient for that
// folder); the extension only tells it that settings changed, and writes "Select Target" to
// the folder of the active configuration. Pure parts, unit-tested.
'use strict';

/**
 * Where "Select Target" writes the target: the folder of the active configuration in a
 * multi-root window, or where that folder has a value of its own already; else the
 * workspace; else (no folder open) the user settings.
 * @param {{folders: number, inFolder: boolean, folderValue?: unknown}} where
 *   folders: workspace folders open; inFolder: the active configuration is in one;
 *   folderValue: the target that folder sets itself (inspect().workspaceFolderValue)
 * @returns {'WorkspaceFolder' | 'Workspace' | 'Global'}
 */
function targetSettingLevel({ folders, inFolder, folderValue }) {
  if (inFolder && (folders > 1 || folderValue !== undefined)) {
    return 'WorkspaceFolder';
  }
  return folders > 0 ? 'Workspace' : 'Global';
}

/**
 * The status of a folder: the server's `fusionSwitch/status` carries the window's target and
 * catalogue, and under `folders` (by folder URI) those of each folder with settings of its own.
 * @param {object | undefined} status
 * @param {string | undefined} folderUri  the active configuration's workspace folder
 */
function statusOfFolder(status, folderUri) {
  const own = status && folderUri && status.folders && status.folders[folderUri];
  return own && typeof own === 'object' ? { ...status, ...own } : status;
}

module.exports = { targetSettingLevel, statusOfFolder };
