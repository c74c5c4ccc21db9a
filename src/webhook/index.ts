// The admission webhook: server, certificates, configurations, validators.
export { startWebhookServer, createReviewer, type WebhookServerOptions, type WebhookServer, type Reviewer } from './server.ts';
export { SelfManagedCerts, FileCerts, StaticCerts, certSourceFor, generateCA, generateServingCert, certValidity, type CertSource, type ServingCert, type WebhookCertConfig, type SelfManagedCertsOptions, type FileCertsOptions } from './certs.ts';
export { buildWebhookConfigurations, installWebhookConfigurations, uninstallWebhookConfigurations, PATHS, DEFAULT_NAMES, type WebhookConfigOptions } from './config.ts';
export { validateSource, type SourceFacts } from './validate-source.ts';
export { validateTask, type TaskFacts, type InventoryReader, type InventoryVM, type InventoryHost } from './validate-task.ts';
export { isWellFormedResponse, type AdmissionReview } from './review.ts';
