export {};
//# sourceMappingURL=api.js.map