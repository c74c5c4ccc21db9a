// Pure checks shared by the admission webhook and the VMImportTask reconciler.
export * from './storage.ts';
export * from './names.ts';
export * from './cidr.ts';
export * from './quota.ts';
export * from './tls.ts';
export * from './warm.ts';
