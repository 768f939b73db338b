/** Reading Markdown in tests: the guide's fenced blocks. */

/** The fenced blocks of a Markdown text (indented ones, in lists, too): info string and body, as written. */
export function fencedBlocks(markdown: string): { info: string; body: string }[] {
  const blocks: { info: string; body: string }[] = [];
  const pattern = /^( *)```([^\n`]*)\n([\s\S]*?)^\1```$/gm;
  for (const match of markdown.matchAll(pattern)) blocks.push({ info: match[2]!.trim(), body: match[3]! });
  return blocks;
}
