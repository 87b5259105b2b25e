// Series colours, one per rank (Live run) or per run (Compare); readable on the light and dark themes.
export const PALETTE = ['#2563eb', '#db2777', '#16a34a', '#ea580c', '#7c3aed', '#0891b2', '#ca8a04', '#dc2626'] as const;
