// Shell completion. One engine, `kubectl-vmimport __complete WORD...` (the words after the program name,
// the last one being completed), answers in Cobra's protocol — candidates one per line, then
// `:<directive>` — which is what kubectl (1.26 and later) expects of a plugin's `kubectl_complete-<name>`
// helper; the bash and zsh scripts below call the same engine. What to complete is decided here, purely,
// from the command table (spec.ts); names of tasks, sources and VMs are then read from the API (main.ts).
import { parseArgs } from 'node:util';
import { COMMANDS, allOptions, commandSpec, type Completion } from './spec.ts';

/** Cobra's ShellCompDirectiveNoFileComp: no file names when nothing matches. */
export const DIRECTIVE_NO_FILES = 4;

export type CompletionRequest =
  | { kind: 'static'; candidates: string[] }
  /** Names to read from the API; `prefix` is put back before each candidate (`--source=`). */
  | { kind: 'task' | 'source' | 'vm'; partial: string; prefix: string; source?: string; globals: { namespace?: string; context?: string; kubeconfig?: string } };

function staticOf(list: readonly string[], partial: string, prefix = ''): CompletionRequest {
  return { kind: 'static', candidates: list.filter((c) => c.startsWith(partial)).map((c) => prefix + c) };
}

/** The global flags and --source given so far (for the API lookups of dynamic completions). */
function given(words: readonly string[]): { globals: { namespace?: string; context?: string; kubeconfig?: string }; source?: string } {
  const options = {
    namespace: { type: 'string', short: 'n' },
    context: { type: 'string' },
    kubeconfig: { type: 'string' },
    source: { type: 'string' },
  } as const;
  try {
    const { values } = parseArgs({ args: [...words], options, strict: false, allowPositionals: true });
    const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
    return { globals: { namespace: str(values.namespace), context: str(values.context), kubeconfig: str(values.kubeconfig) }, source: str(values.source) };
  } catch {
    return { globals: {} };
  }
}

function byCompletion(c: Completion, partial: string, prefix: string, words: readonly string[]): CompletionRequest {
  if (c === undefined) return { kind: 'static', candidates: [] };
  if (Array.isArray(c)) return staticOf(c as readonly string[], partial, prefix);
  const g = given(words);
  return { kind: c as 'task' | 'source' | 'vm', partial, prefix, globals: g.globals, ...(g.source ? { source: g.source } : {}) };
}

/** What to offer for the last of `words` (the words after the program name). Pure. */
export function completionFor(words: readonly string[]): CompletionRequest {
  const cur = words.at(-1) ?? '';
  if (words.length <= 1) return staticOf([...COMMANDS.map((c) => c.name), 'help'], cur);
  const cmd = commandSpec(words[0]!);
  if (words[0] === 'help') return words.length === 2 ? staticOf(COMMANDS.map((c) => c.name), cur) : { kind: 'static', candidates: [] };
  if (!cmd) return { kind: 'static', candidates: [] };
  const opts = allOptions(cmd);
  const before = words.slice(1, -1);
  if (cur.startsWith('--') && cur.includes('=')) {
    const name = cur.slice(2, cur.indexOf('='));
    const o = opts[name];
    return o && o.type === 'string' ? byCompletion(o.complete, cur.slice(cur.indexOf('=') + 1), `--${name}=`, before) : { kind: 'static', candidates: [] };
  }
  if (cur.startsWith('-')) return staticOf(Object.keys(opts).map((n) => `--${n}`), cur);
  const prev = words.at(-2) ?? '';
  const prevOpt = prev.startsWith('--') ? opts[prev.slice(2)] : prev.startsWith('-') && prev.length === 2 ? Object.values(opts).find((o) => o.short === prev.slice(1)) : undefined;
  if (prevOpt && prevOpt.type === 'string') return byCompletion(prevOpt.complete, cur, '', before);
  return byCompletion(cmd.positional, cur, '', before);
}

/** The engine's answer in Cobra's format. */
export function cobraOutput(candidates: readonly string[]): string {
  return `${candidates.join('\n')}${candidates.length ? '\n' : ''}:${DIRECTIVE_NO_FILES}\n`;
}

/** `completion bash`: completes `kubectl-vmimport …` through `kubectl-vmimport __complete`. */
export function bashScript(): string {
  return `# bash completion for kubectl-vmimport (source <(kubectl-vmimport completion bash))
_kubectl_vmimport() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" IFS=$'\\n' out
  out=$(kubectl-vmimport __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
  COMPREPLY=( $(printf '%s\\n' "$out" | grep -v '^:') )
  [[ \${#COMPREPLY[@]} -eq 0 ]] && compopt -o nospace 2>/dev/null
  return 0
}
complete -F _kubectl_vmimport kubectl-vmimport
`;
}

/** `completion zsh`: the same for zsh (sourced after compinit, or saved as _kubectl-vmimport on fpath). */
export function zshScript(): string {
  return `#compdef kubectl-vmimport
# zsh completion for kubectl-vmimport (kubectl-vmimport completion zsh > "\${fpath[1]}/_kubectl-vmimport")
_kubectl-vmimport() {
  local -a cands
  cands=("\${(@f)$(kubectl-vmimport __complete "\${(@)words[2,CURRENT]}" 2>/dev/null | grep -v '^:')}")
  (( \${#cands[@]} )) && [[ -n "\${cands[1]}" ]] && compadd -- "\${cands[@]}"
}
if [[ "\${funcstack[1]}" = "_kubectl-vmimport" ]]; then
  _kubectl-vmimport "$@"
else
  compdef _kubectl-vmimport kubectl-vmimport
fi
`;
}
