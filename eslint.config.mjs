import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/**
 * Inside an app, feature folders depend one way: shared state at the bottom, use cases above it.
 * A folder may import the folders listed before it, never one listed after it (an import back up
 * is an error). A new folder goes where its imports put it; schema and web-tools have one folder
 * each, and join the list when they get a second.
 */
const FOLDER_LAYERS = {
  credentials: [
    'cache',
    'crypto',
    'secrets',
    'sandbox-configs',
    'webhooks',
    'oauth-tokens',
    'env-resolution',
    'org-secrets',
    'sealed-values',
    'auth',
    'database',
  ],
  executor: ['calls', 'records', 'database', 'builtins', 'executions', 'environments'],
  'mcp-gateway': ['auth', 'tools', 'sessions', 'streams', 'calls', 'mcp', 'http'],
  'mcp-sync': ['store', 'database', 'connections', 'sync', 'accounts', 'servers', 'calls'],
  'runner-local': ['metrics', 'environments', 'runs'],
  'runner-e2b': ['sandboxes', 'runs'],
  'runner-modal': ['sandboxes', 'runs'],
  registry: ['catalog', 'database', 'events', 'builtins', 'agents', 'tools', 'toolsets'],
};

const folderLayers = Object.entries(FOLDER_LAYERS).flatMap(([app, layers]) =>
  layers.slice(0, -1).map((folder, i) => ({
    files: [`apps/${app}/src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: layers.slice(i + 1).flatMap((above) => [`../${above}`, `../${above}/*`, `../../${above}/*`]),
              message: `apps/${app}/src/${folder}/ sits below ${layers.slice(i + 1).join(', ')} (FOLDER_LAYERS in eslint.config.mjs): move what both need down, or the use case up.`,
            },
          ],
        },
      ],
    },
  })),
);

export default [
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.toolplane/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          allow: [],
          depConstraints: [
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:contracts'] },
            { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib', 'type:contracts'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib', 'type:contracts'] },
          ],
        },
      ],
      'no-console': 'error',
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read process.env only in an app config (*.config.ts) or tools/.',
        },
      ],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    files: [
      '**/*.config.ts',
      '**/main.ts',
      'tools/**/*.ts',
      'test/**/*.ts',
      '**/*.spec.ts',
      '**/test/**/*.ts',
      'libs/sandbox/**/*.ts',
    ],
    rules: { 'no-restricted-properties': 'off' },
  },
  ...folderLayers,
  {
    files: ['libs/contracts/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@nestjs/*', '@nats-io/*', 'typeorm', '@opentelemetry/*'], message: 'contracts import only zod' },
          ],
        },
      ],
    },
  },
];
