import { readFile, rename, writeFile } from "node:fs/promises";
import { DEFAULTS, type Settings } from "./defaults.js";

/** The settings stored in `file`, completed with the defaults. */
export async function loadSettings(file: string): Promise<Settings> {
  const text = await readFile(file, "utf8");
  return { ...DEFAULTS, ...(JSON.parse(text) as Partial<Settings>) };
}

/** Writes `settings` to `file` atomically (a temporary file, then a rename). */
export async function saveSettings(file: string, settings: Settings): Promise<void> {
  const tmp = `${file}.tmp`;
  await writeFile(tmp, JSON.stringify(settings, null, 2) + "\n", "utf8");
  await rename(tmp, file);
}

/** The setting `key`. */
export async function getSetting<K extends keyof Settings>(file: string, key: K): Promise<Settings[K]> {
  const settings = await loadSettings(file);
  return settings[key];
}
