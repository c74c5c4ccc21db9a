// The commands of `kubectl vmimport`, as data: each command's options (what node:util parseArgs is given),
// its usage, help text and example, and what its arguments complete to. Parsing (args.ts), `--help` and
// shell completion (complete.ts) are all read from this one table, so they cannot disagree. Pure.

/** What a positional argument or an option's value completes to. */
export type Completion = 'task' | 'source' | 'vm' | readonly string[] | undefined;

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** Shown after the flag in help (`--storage-class CLASS`). */
  value?: string;
  help: string;
  complete?: Completion;
}

export interface CommandSpec {
  name: string;
  /** One line: what it does. */
  summary: string;
  /** After `kubectl vmimport <name>`. */
  usage: string;
  /** Paragraphs below the usage line. */
  description: string;
  options: Record<string, OptionSpec>;
  /** What positional arguments complete to. */
  positional: Completion;
  /** Positional arguments: at least, at most. */
  args: [number, number];
  example: string;
}

/** Options every command takes: the kubeconfig, context and namespace, as kubectl's own. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  namespace: { type: 'string', short: 'n', value: 'NAMESPACE', help: "the namespace (default: the context's namespace)" },
  context: { type: 'string', value: 'CONTEXT', help: 'the kubeconfig context to use (default: the current context)' },
  kubeconfig: { type: 'string', value: 'FILE', help: 'the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)' },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
};

const OUTPUT_VMS = ['wide', 'json', 'yaml'] as const;

const TIMEOUT: OptionSpec = { type: 'string', value: 'DURATION', help: 'give up after this long (90s, 30m, 2h); default: wait until the tasks end' };
/** create, retry and cutover can go on as `watch` (one process: nothing of the task's progress is missed). */
const THEN_WATCH: Record<string, OptionSpec> = {
  watch: { type: 'boolean', help: 'then follow the task as `kubectl vmimport watch` does, and exit as it does' },
  timeout: { ...TIMEOUT, help: 'with --watch: give up after this long (90s, 30m, 2h)' },
};
export const REPORT_FORMATS = ['table', 'csv', 'json', 'markdown'] as const;

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'vms',
    summary: 'list the VMs a source sees, with their readiness verdict',
    usage: 'vms SOURCE [--folder PATH] [--name TEXT] [--blocked | --ready] [-o wide|json|yaml]',
    description:
      "One line per VM of the source's published inventory (status.inventory): name, id, power, guest OS, firmware, disks and their size, ESXi host, verdict. " +
      '--ready keeps the VMs that can be imported (Ready and ReadyWithWarnings), --blocked those that cannot; -o wide adds the folder, VMware Tools, CBT, NICs and the first concern.',
    options: {
      folder: { type: 'string', value: 'PATH', help: 'only VMs in this inventory folder or below it (/dc/vm/web)' },
      name: { type: 'string', value: 'TEXT', help: 'only VMs whose name contains TEXT' },
      blocked: { type: 'boolean', help: 'only VMs whose verdict is Blocked' },
      ready: { type: 'boolean', help: 'only VMs that can be imported (Ready, ReadyWithWarnings)' },
      output: { type: 'string', short: 'o', value: 'FORMAT', help: 'wide, json or yaml', complete: OUTPUT_VMS },
    },
    positional: 'source',
    args: [1, 1],
    example: 'kubectl vmimport vms vcenter-prod --ready --folder /dc/vm/web',
  },
  {
    name: 'create',
    summary: 'create an import task for VMs picked by name or id',
    usage: 'create TASK --source SOURCE --vm NAME|ID... [--storage-class CLASS] [--network SRC=multus:NAD|SRC=pod...] [--warm [--cutover TIME]] [--conversion] [--dry-run=client|server] [-o yaml|json] [--watch [--timeout DURATION]]',
    description:
      "VM names resolve through the source's inventory; a name several VMs share is refused, listing them (give the id instead). " +
      "--dry-run=client prints the VMImportTask it would apply; otherwise it is created and the admission webhook's warnings are shown.",
    options: {
      source: { type: 'string', value: 'SOURCE', help: 'the VMImportSource to import from', complete: 'source' },
      vm: { type: 'string', multiple: true, value: 'NAME|ID', help: 'a VM to import, by its vCenter name or id (vm-N); repeat for more', complete: 'vm' },
      'storage-class': { type: 'string', value: 'CLASS', help: 'the storage class of the disks (must bind Immediate; default: the cluster default)' },
      network: { type: 'string', multiple: true, value: 'SRC=multus:NAD', help: 'map a source network (id or name) to a NetworkAttachmentDefinition, or SRC=pod; repeat for more' },
      warm: { type: 'boolean', help: 'import warm: copy while the VMs run, power off only at the cutover' },
      cutover: { type: 'string', value: 'TIME', help: 'warm only: when to cut over (RFC 3339, or "now"); absent: precopy until `kubectl vmimport cutover`' },
      conversion: { type: 'boolean', help: 'convert the guests with virt-v2v (when the platform enables it)' },
      'dry-run': { type: 'string', value: 'MODE', help: 'client: print the task, create nothing; server: have the API server and webhook judge it, create nothing', complete: ['client', 'server'] },
      output: { type: 'string', short: 'o', value: 'FORMAT', help: 'with --dry-run=client: yaml (default) or json', complete: ['yaml', 'json'] },
      ...THEN_WATCH,
    },
    positional: undefined,
    args: [1, 1],
    example: 'kubectl vmimport create import-web-tier --source vcenter-prod --vm web-01 --vm db-01 --storage-class replicated',
  },
  {
    name: 'watch',
    summary: 'show live progress of tasks until they end; exit 0 only if every VM succeeded',
    usage: 'watch TASK... [--timeout DURATION]',
    description:
      'Per VM: phase, progress bar, bytes, rate and ETA, precopies of a warm import, and the reason of a failure; per task: its phase and overall progress. ' +
      'On a terminal the block is redrawn in place; otherwise (a pipe, CI) plain blocks are printed on every phase change and every few seconds while bytes move. ' +
      'Exits 0 when every VM of every task succeeded, 1 when any failed or the timeout passed.',
    options: {
      timeout: TIMEOUT,
    },
    positional: 'task',
    args: [1, 64],
    example: 'kubectl vmimport watch import-web-tier',
  },
  {
    name: 'retry',
    summary: 'create a new task holding only the VMs of a task that failed',
    usage: 'retry TASK [--name NEW] [--dry-run=client|server] [-o yaml|json] [--watch [--timeout DURATION]]',
    description:
      'The new task has the same source, storage class, networks, mode and conversion, a name derived from the old one (<task>-retry-1, then -retry-2, ...) and the annotation forklift.cozystack.io/retry-of naming the old task. ' +
      "VMs that succeeded are not retried, nor failed VMs whose outputs (VMInstance, VMDisks) exist or whose failure a retry cannot fix (Blocked, a name conflict): each is listed with why.",
    options: {
      name: { type: 'string', value: 'NEW', help: 'the new task name (default: derived from TASK)' },
      'dry-run': { type: 'string', value: 'MODE', help: 'client: print the task, create nothing; server: have it judged, create nothing', complete: ['client', 'server'] },
      output: { type: 'string', short: 'o', value: 'FORMAT', help: 'with --dry-run=client: yaml (default) or json', complete: ['yaml', 'json'] },
      ...THEN_WATCH,
    },
    positional: 'task',
    args: [1, 1],
    example: 'kubectl vmimport retry import-web-tier',
  },
  {
    name: 'cutover',
    summary: 'set the cutover of a warm task: now, or at a time',
    usage: 'cutover TASK (--now | --at TIME) [--watch [--timeout DURATION]]',
    description: 'A warm import precopies while its VMs run until the cutover; then each VM is powered off for a last, small delta. The cutover may be set, or moved earlier, until it starts.',
    options: {
      now: { type: 'boolean', help: 'cut over now' },
      at: { type: 'string', value: 'TIME', help: 'cut over at this time (RFC 3339: 2026-12-03T22:00:00Z)' },
      ...THEN_WATCH,
    },
    positional: 'task',
    args: [1, 1],
    example: 'kubectl vmimport cutover import-web-tier-warm --now',
  },
  {
    name: 'report',
    summary: 'per VM: outcome, reason, bytes, transfer time, downtime, outputs; and totals',
    usage: 'report TASK... [-o table|csv|json|markdown]',
    description: "Per VM: the outcome and reason, bytes, transfer time, downtime, the VMInstance and VMDisks, and what the platform could not carry over (the assessment's warnings, such as UEFI firmware; the NICs' MAC addresses). Then the totals.",
    options: {
      output: { type: 'string', short: 'o', value: 'FORMAT', help: 'table (default), csv, json or markdown', complete: REPORT_FORMATS },
    },
    positional: 'task',
    args: [1, 64],
    example: 'kubectl vmimport report import-web-tier -o markdown > import-web-tier.md',
  },
  {
    name: 'completion',
    summary: 'print the shell completion script (bash or zsh)',
    usage: 'completion bash|zsh',
    description:
      'bash: source <(kubectl-vmimport completion bash). zsh: kubectl-vmimport completion zsh > "${fpath[1]}/_kubectl-vmimport". ' +
      'For `kubectl vmimport <TAB>` (kubectl 1.26 and later), put an executable kubectl_complete-vmimport on PATH that runs `kubectl-vmimport __complete "$@"`.',
    options: {},
    positional: ['bash', 'zsh'],
    args: [1, 1],
    example: 'source <(kubectl-vmimport completion bash)',
  },
];

export function commandSpec(name: string): CommandSpec | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** Every option of a command, its own and the global ones. */
export function allOptions(c: CommandSpec): Record<string, OptionSpec> {
  return { ...c.options, ...GLOBAL_OPTIONS };
}
