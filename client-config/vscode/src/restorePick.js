// Restore Configuration from the palette or a menu passes no version, and the server restores
// its default (the state before the last change; after Turn Suspected Rules Off on the all-off
// file, the user's own configuration from before All Off). When the history holds more than one
// version, the user chooses, the default first, from the list the server returns for
// `{list: true}` (a review: no client could reach another version).
'use strict';

const RESTORE = 'fusionSwitch.restore';

/** Whether the restore arguments leave the version to choose (none given, not a listing). */
function choosesVersion(command, args) {
  const first = args && args[0];
  return (
    command === RESTORE &&
    Boolean(first) &&
    typeof first === 'object' &&
    !Array.isArray(first) &&
    !('version' in first) &&
    !('list' in first)
  );
}

/**
 * Quick pick items for the server's `{versions: [...], default}` (newest first), the default
 * first; undefined when there is nothing to choose (an error, or one version at most).
 */
function restoreItems(listed) {
  const versions = listed && Array.isArray(listed.versions) ? listed.versions : [];
  if (versions.length < 2) {
    return undefined;
  }
  const items = versions
    .filter((v) => v && Number.isInteger(v.version))
    .map((v) => ({
      label: `Before change ${v.version}: ${v.label}`,
      description: [v.who, v.when].filter(Boolean).join(' · '),
      detail: v.default ? 'Default: what Restore Configuration brings back' : undefined,
      version: v.version,
      isDefault: v.default === true,
    }));
  return [...items.filter((i) => i.isDefault), ...items.filter((i) => !i.isDefault)];
}

/**
 * The restore arguments with the version the user picked; the arguments as they are when
 * there is nothing to choose; undefined when the user closed the pick (nothing is restored).
 * @param {unknown[]} args
 * @param {(args: unknown[]) => Promise<unknown>} list  runs the server's restore with these args
 * @param {(items: object[]) => Promise<{version: number} | undefined>} pick
 */
async function withChosenVersion(args, list, pick) {
  const [first, ...rest] = args;
  const items = restoreItems(await list([{ ...first, list: true }, ...rest]));
  if (!items) {
    return args;
  }
  const chosen = await pick(items);
  return chosen ? [{ ...first, version: chosen.version }, ...rest] : undefined;
}

module.exports = { RESTORE, choosesVersion, restoreItems, withChosenVersion };
