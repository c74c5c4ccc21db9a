// Guest conversion is a platform opt-in (docs/conversion.md): pure checks shared by the admission webhook
// and the task preflight (which repeats it for a task admitted while the webhook was off).

export const GUEST_CONVERSION_DISABLED_MESSAGE =
  'spec.guestConversion: guest conversion is not enabled on this platform; the platform administrator enables it with the chart value guestConversion.enabled=true once every node carries the seccomp profile virt-v2v needs (libguestfs starts passt). Remove the field to import by raw copy';

/** The problem with a task's spec.guestConversion on a platform with or without the opt-in; undefined when none. */
export function guestConversionProblem(value: unknown, platformEnabled: boolean): string | undefined {
  if (value === undefined || value === false) return undefined;
  if (value !== true) return `spec.guestConversion must be true or false (got ${JSON.stringify(value)})`;
  return platformEnabled ? undefined : GUEST_CONVERSION_DISABLED_MESSAGE;
}
