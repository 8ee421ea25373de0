export * from './aead';
export * from './keys';
export * from './signing';
