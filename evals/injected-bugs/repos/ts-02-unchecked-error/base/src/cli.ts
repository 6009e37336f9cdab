import { isSettingKey } from "./defaults.js";
import { getSetting } from "./settings.js";

const FILE = process.env.SETTINGS_FILE ?? "settings.json";

async function main(args: string[]): Promise<number> {
  const [command, key] = args;
  if (command !== "get" || key === undefined) {
    console.error("usage: settings get KEY");
    return 2;
  }
  if (!isSettingKey(key)) {
    console.error(`unknown setting ${key}`);
    return 2;
  }
  console.log(JSON.stringify(await getSetting(FILE, key)));
  return 0;
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
