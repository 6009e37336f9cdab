import { pad, rule, type Align } from "./align.js";

export interface Table {
  header: string[];
  rows: string[][];
  align?: Align[];
}

/** Widths of each column: the longest cell, at least 3 for the separator. */
export function columnWidths(table: Table): number[] {
  return table.header.map((h, c) => Math.max(3, h.length, ...table.rows.map((r) => (r[c] ?? "").length)));
}

function renderRow(cells: string[], widths: number[], align: Align[]): string {
  const padded = widths.map((w, c) => pad(cells[c] ?? "", w, align[c] ?? "left"));
  return `| ${padded.join(" | ")} |`;
}

/** The table as GitHub-flavoured markdown. */
export function render(table: Table): string {
  const widths = columnWidths(table);
  const align = table.align ?? [];
  const separator = `| ${widths.map((w, c) => rule(w, align[c] ?? "left")).join(" | ")} |`;
  const lines = [renderRow(table.header, widths, align), separator];
  for (const row of table.rows) {
    lines.push(renderRow(row, widths, align));
  }
  return lines.join("\n");
}
