export * from './aead';
export * from './keys';
