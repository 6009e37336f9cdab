export type Align = "left" | "right" | "center";

/** `text` padded with spaces to `width`, aligned as asked. */
export function pad(text: string, width: number, align: Align): string {
  const room = Math.max(0, width - text.length);
  switch (align) {
    case "left":
      return text + " ".repeat(room);
    case "right":
      return " ".repeat(room) + text;
    case "center": {
      const left = Math.floor(room / 2);
      return " ".repeat(left) + text + " ".repeat(room - left);
    }
  }
}

/** The separator cell under a header of `width`, with alignment colons. */
export function rule(width: number, align: Align): string {
  const dashes = "-".repeat(Math.max(3, width));
  if (align === "right") return dashes.slice(1) + ":";
  if (align === "center") return ":" + dashes.slice(2) + ":";
  return dashes;
}
