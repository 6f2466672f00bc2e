// The tdsl extension: starts `tdsl lsp` over stdio for `.tool` files (docs/editors.md).
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration('tdsl');
  const command = config.get('path') || 'tdsl';
  const root = config.get('root');
  const serverOptions = { command, args: ['lsp'] };
  const clientOptions = {
    documentSelector: [{ scheme: 'file', language: 'tdsl-tool' }],
    // A callee that changes on disk re-checks the open files that call it.
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher('**/*.tool') },
    initializationOptions: root ? { root } : {},
  };
  client = new LanguageClient('tdsl', 'tdsl', serverOptions, clientOptions);
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
