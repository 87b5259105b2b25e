// Composition root of the renderer: pick the Api transport once (Electron's preload bridge, or
// the WebSocket of `cohort serve`), then mount the app. Nothing else knows which one it is.
import { mount } from 'svelte';
import App from './App.svelte';
import { createIpcApi, ipcBridge } from './api/ipc-client';
import { createWsApi, wsUrlFromLocation } from './api/ws-client';
import { app, setApi } from './state/app.svelte';
import './styles.css';

const bridge = ipcBridge();
if (bridge) {
  setApi(createIpcApi(bridge));
} else {
  const ws = createWsApi(wsUrlFromLocation(location));
  ws.onConnection((s) => (app.connection = s));
  setApi(ws);
}

mount(App, { target: document.getElementById('app')! });
