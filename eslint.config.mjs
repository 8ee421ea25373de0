import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

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
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read process.env only in an app config (*.config.ts) or tools/.' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    files: ['**/*.config.ts', '**/main.ts', 'tools/**/*.ts', 'test/**/*.ts', '**/*.spec.ts', '**/test/**/*.ts', 'libs/sandbox/**/*.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    files: ['libs/contracts/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['@nestjs/*', '@nats-io/*', 'typeorm', '@opentelemetry/*'], message: 'contracts import only zod' }] }],
    },
  },
];
