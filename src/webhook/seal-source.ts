// The mutating half of VMImportSource admission: every inline password (spec.credentials.password and
// spec.hosts[].credentials.password) is replaced by its sealed form, and so is its copy in kubectl's
// last-applied-configuration annotation (which `kubectl apply` would otherwise keep in plain text).
// Pure: the key ring comes in, a JSON patch (fast-json-patch) goes out.
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { SealError, isLegacySealed, isSealed, seal, sealedKid, unseal, type Keyring, type SealBinding } from '../credentials/seal.ts';
import { asArray, asObject, asString, type JsonObject } from './fields.ts';

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

export interface SealOutcome {
  /** JSON patch turning the request's object into the sealed one (empty: nothing to change). */
  patch: Operation[];
  /** Problems found (never containing a password or a sealed value). */
  problems: string[];
}

/** Each password slot of a source spec: its field path for messages and a stable key to pair old with new. */
interface Slot {
  field: string;
  key: string;
  holder: JsonObject;
  /** The endpoint the password is for (the sealed value is bound to it). */
  binding: SealBinding;
  /** The fields naming that endpoint, for messages. */
  endpointFields: string;
}

function slots(spec: JsonObject | undefined, namespace: string): Slot[] {
  const out: Slot[] = [];
  const url = asString(spec?.url) ?? '';
  const cred = asObject(spec?.credentials);
  if (cred) out.push({ field: 'spec.credentials.password', key: 'vcenter', holder: cred, binding: { namespace, url }, endpointFields: 'spec.url' });
  (asArray(spec?.hosts) ?? []).forEach((h, i) => {
    const hc = asObject(asObject(h)?.credentials);
    const id = asString(asObject(h)?.id) ?? `#${i}`;
    const address = asString(asObject(h)?.address) ?? '';
    if (hc) out.push({ field: `spec.hosts[${i}].credentials.password`, key: `host/${id}`, holder: hc, binding: { namespace, url, address }, endpointFields: `spec.url or spec.hosts[${i}].address` });
  });
  return out;
}

const sameBinding = (a: SealBinding, b: SealBinding | undefined): boolean => !!b && a.namespace === b.namespace && a.url === b.url && a.address === b.address;

/** Key ids named by sealed passwords in the object (the caller re-reads the ring when one is unknown). */
export function sealedKidsIn(object: unknown): string[] {
  const kids = new Set<string>();
  for (const s of slots(asObject(asObject(object)?.spec), '')) {
    const p = s.holder.password;
    if (isSealed(p)) {
      const k = sealedKid(p);
      if (k) kids.add(k);
    }
  }
  return [...kids];
}

function sealSpec(ring: Keyring, namespace: string, spec: JsonObject | undefined, previous: JsonObject | undefined, problems: string[], where: string): void {
  const prev = new Map(slots(previous, namespace).map((s) => [s.key, s] as const));
  for (const s of slots(spec, namespace)) {
    const v = s.holder.password;
    if (typeof v !== 'string' || v === '') continue; // validation reports a missing password
    const before = prev.get(s.key);
    const old = before?.holder.password;
    const field = `${where}${s.field}`;
    const again = `write the password again in plain text; it is sealed on admission for the new endpoint`;
    if (isSealed(v)) {
      if (v === old && sameBinding(s.binding, before?.binding)) continue; // unchanged: kept as it is, whatever key sealed it
      if (v === old) {
        problems.push(`${field}: ${s.endpointFields} changed, and a sealed password opens only for the endpoint it was written for; ${again}`);
        continue;
      }
      if (isLegacySealed(v)) {
        problems.push(`${field} is a sealed value of an earlier version (enc:v1:…), usable only where it is stored; write the password in plain text instead, it is sealed on admission`);
        continue;
      }
      try {
        unseal(ring, v, s.binding);
      } catch (e) {
        const why = e instanceof SealError && e.code === 'UnknownKey' ? e.message : `it does not open here (altered, or sealed for another namespace, ${s.endpointFields})`;
        problems.push(`${field} is a sealed value (enc:v2:…) that cannot be used: ${why}; write the password in plain text instead, it is sealed on admission`);
      }
      continue;
    }
    // Plain text equal to what the stored sealed value holds, for the same endpoint: keep the stored
    // value (re-applying a manifest, also after a key rotation, changes nothing).
    if (isSealed(old) && sameBinding(s.binding, before?.binding)) {
      try {
        if (unseal(ring, old, before!.binding) === v) {
          s.holder.password = old;
          continue;
        }
      } catch {
        // the old value no longer opens: seal the new one afresh
      }
    }
    try {
      s.holder.password = seal(ring, v, s.binding);
    } catch (e) {
      problems.push(`${field} ${e instanceof SealError && e.code === 'TooLong' ? 'is too long: at most 1024 bytes' : 'could not be sealed; try again'}`);
    }
  }
}

/**
 * The patch sealing `object`'s passwords. `oldObject` (on UPDATE) supplies the stored sealed values, so
 * an unchanged password keeps its stored form byte for byte.
 */
export function sealSourcePasswords(ring: Keyring, namespace: string, object: unknown, oldObject: unknown): SealOutcome {
  const problems: string[] = [];
  const original = asObject(object);
  if (!original) return { patch: [], problems };
  const mutated = structuredClone(original);
  sealSpec(ring, namespace, asObject(mutated.spec), asObject(asObject(oldObject)?.spec), problems, '');

  const meta = asObject(mutated.metadata);
  const annotations = asObject(meta?.annotations);
  const lastApplied = asString(annotations?.[LAST_APPLIED]);
  if (annotations && lastApplied !== undefined) {
    let parsed: JsonObject | undefined;
    try {
      parsed = asObject(JSON.parse(lastApplied));
    } catch {
      parsed = undefined;
    }
    if (parsed) {
      // The sealed spec just computed is the reference: the annotation gets the very same text.
      sealSpec(ring, namespace, asObject(parsed.spec), asObject(mutated.spec), [], '');
      annotations[LAST_APPLIED] = JSON.stringify(parsed) + (lastApplied.endsWith('\n') ? '\n' : '');
    } else if (slots(asObject(mutated.spec), namespace).some((s) => typeof s.holder.password === 'string')) {
      // Unreadable, so it cannot be proven free of a password: drop it rather than store one.
      delete annotations[LAST_APPLIED];
    }
  }
  if (problems.length) return { patch: [], problems };
  return { patch: fastJsonPatch.compare(original, mutated), problems };
}
