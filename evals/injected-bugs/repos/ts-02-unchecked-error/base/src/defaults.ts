export interface Settings {
  theme: "light" | "dark" | "system";
  fontSize: number;
  autosave: boolean;
  recentFiles: string[];
}

export const DEFAULTS: Readonly<Settings> = Object.freeze({
  theme: "system",
  fontSize: 14,
  autosave: true,
  recentFiles: [],
});

/** Whether `key` names a setting. */
export function isSettingKey(key: string): key is keyof Settings {
  return Object.prototype.hasOwnProperty.call(DEFAULTS, key);
}

/** Parses a value typed on the command line for the setting `key`. */
export function parseValue(key: keyof Settings, text: string): Settings[keyof Settings] {
  const sample = DEFAULTS[key];
  if (typeof sample === "number") return Number(text);
  if (typeof sample === "boolean") return text === "true";
  if (Array.isArray(sample)) return text.split(",");
  return text as Settings["theme"];
}
