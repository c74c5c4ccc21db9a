// The API of postject (it ships none): inject a resource into an executable (its dist/api.js).
declare module 'postject' {
  export function inject(filename: string, resourceName: string, resourceData: Buffer, options?: { sentinelFuse?: string; machoSegmentName?: string; overwrite?: boolean }): Promise<void>;
}
