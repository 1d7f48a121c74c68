/** Types of scripts/build-admin.mjs, for the tests that build the dashboard first. */
export declare const OUT_DIR: string;
/** Builds the dashboard into `outDir` (default dist/dashboard); resolves with the files written. */
export declare function buildDashboard(options?: { outDir?: string }): Promise<{ name: string; bytes: number }[]>;
