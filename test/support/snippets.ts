// The code blocks of a Markdown document, with what each claims: a `<!-- snippet: run -->` or
// `<!-- snippet: typecheck -->` comment on the line before its fence; `fragment` for a block that is
// an excerpt and claims neither. Read by the docs' snippet test and the client's tarball smoke test.

export type SnippetMark = 'run' | 'typecheck' | 'fragment';

export interface CodeBlock {
  /** The fence's language (`js`, `ts`, `sh`, …; '' when none). */
  lang: string;
  code: string;
  mark: SnippetMark | undefined;
  /** 1-based line of the opening fence. */
  line: number;
}

const MARK = /^<!--\s*snippet:\s*(run|typecheck|fragment)\s*-->$/;

/** Every fenced block (``` only, as the project's docs write them), nested in a list or not. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    const indent = open[1]?.length ?? 0;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] ?? ''); i++)
      body.push((lines[i] ?? '').slice(indent));
    const mark = MARK.exec((lines[start - 1] ?? '').trim())?.[1] as SnippetMark | undefined;
    blocks.push({ lang: open[2] ?? '', code: `${body.join('\n')}\n`, mark, line: start + 1 });
  }
  return blocks;
}
