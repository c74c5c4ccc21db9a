// The controller process: flags → runController → signals. Loaded by src/main.ts once the runtime is
// known to serve it.
import { ConfigError, parseConfig } from './config.ts';
import { runController } from './app.ts';

export async function main(): Promise<void> {
  let cfg;
  try {
    cfg = parseConfig(process.argv.slice(2), process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      process.exit(2);
    }
    throw e;
  }
  const ac = new AbortController();
  const ctl = await runController(cfg, {
    signal: ac.signal,
    // Losing the lease: the controller has already stopped reconciling; exit non-zero so the pod restarts
    // as a fresh standby.
    onLostLease: () => process.exit(1),
  });
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) process.exit(130); // a second signal: the operator insists
    console.error(JSON.stringify({ level: 'info', msg: `received ${sig}; shutting down` }));
    void ctl.stop().then(() => process.exit(0));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
