// Which Node.js runtimes the controller can serve. Pure: the caller passes process.versions.node.

/**
 * The oldest Node.js this code runs on: 24.2 is the first release with `import.meta.main`, which decides
 * whether src/main.ts (dist/main.js in the image) is the entry point. On an older runtime the module would
 * load, find no `import.meta.main`, and exit 0 having done nothing — a controller that looks healthy to
 * its supervisor and never reconciles.
 */
export const MIN_NODE = { major: 24, minor: 2 } as const;
/** package.json engines: ">=24 <25" (the Node line the image ships and the tests run on). */
export const MAX_NODE_MAJOR = 24;

/** Why this runtime cannot serve the controller, or undefined when it can. */
export function runtimeProblem(nodeVersion: string): string | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(nodeVersion);
  if (!m) return `cannot parse the Node.js version "${nodeVersion}"; migration-controller needs Node.js ${MIN_NODE.major}.${MIN_NODE.minor} or newer ${MAX_NODE_MAJOR}.x`;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  if (major < MIN_NODE.major || (major === MIN_NODE.major && minor < MIN_NODE.minor)) {
    return `Node.js ${nodeVersion} is too old: migration-controller needs Node.js ${MIN_NODE.major}.${MIN_NODE.minor} or newer ${MAX_NODE_MAJOR}.x (import.meta.main)`;
  }
  if (major > MAX_NODE_MAJOR) {
    return `Node.js ${nodeVersion} is not supported: migration-controller is built and tested on Node.js ${MAX_NODE_MAJOR}.x`;
  }
  return undefined;
}
