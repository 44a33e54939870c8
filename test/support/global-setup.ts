// Placeholder until the embedded services land: starts nothing yet.
export default async function globalSetup(): Promise<void> {}
