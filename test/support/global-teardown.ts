export default async function globalTeardown(): Promise<void> {
  await globalThis.__SDCOREJS_POSTGRES__?.stop();
}
