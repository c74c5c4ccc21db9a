// The demo's renderer is the plugin's (kubectl vmimport watch): one renderer, src/plugin/render.ts.
export * from '../../src/plugin/render.ts';
