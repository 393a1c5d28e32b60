(function(){
var list=document.getElementById('session-list'),controls=document.getElementById('session-controls');
if(!list||!controls)return;
var items=[].slice.call(list.querySelectorAll('details.session'));
var selects=[].slice.call(controls.querySelectorAll('select[data-filter]'));
var buttons=[].slice.call(controls.querySelectorAll('button[data-sort]'));
var count=document.getElementById('session-count');
var sort={key:'order',desc:false};
function num(el,k){var v=el.getAttribute('data-'+k);return v===null||v===''?null:parseFloat(v);}
function cmp(a,b){
 var d=num(a,'order')-num(b,'order');if(sort.key==='order')return d;
 var x=num(a,sort.key),y=num(b,sort.key);
 if(x===null||y===null)return x===y?d:(x===null?1:-1);
 return (sort.desc?y-x:x-y)||d;}
function apply(){
 var f={},n=0;
 selects.forEach(function(s){if(s.value)f[s.getAttribute('data-filter')]=s.value;});
 items.forEach(function(el){
  var ok=Object.keys(f).every(function(k){return el.getAttribute('data-'+k)===f[k];});
  el.hidden=!ok;if(ok)n++;});
 items.slice().sort(cmp).forEach(function(el){list.appendChild(el);});
 count.textContent=n+' of '+items.length+' sessions shown';
 buttons.forEach(function(b){b.setAttribute('aria-pressed',String(b.getAttribute('data-sort')===sort.key));
  var k=b.getAttribute('data-sort');b.textContent=b.getAttribute('data-label')+(k===sort.key&&k!=='order'?(sort.desc?' \u2193':' \u2191'):'');});
 var parts=Object.keys(f).map(function(k){return k+'='+encodeURIComponent(f[k]);});
 if(sort.key!=='order')parts.push('sort='+sort.key+(sort.desc?'-desc':''));
 try{history.replaceState(null,'',parts.length?'#'+parts.join('&'):location.href.split('#')[0]);}catch(e){}}
location.hash.replace(/^#/,'').split('&').forEach(function(p){
 var kv=p.split('='),k=kv[0],v=decodeURIComponent(kv[1]||'');if(!k)return;
 if(k==='sort'){var m=v.match(/^(\w+?)(-desc)?$/);if(m&&buttons.some(function(b){return b.getAttribute('data-sort')===m[1];})){sort.key=m[1];sort.desc=!!m[2];}return;}
 selects.forEach(function(s){if(s.getAttribute('data-filter')===k&&[].some.call(s.options,function(o){return o.value===v;}))s.value=v;});});
selects.forEach(function(s){s.addEventListener('change',apply);});
buttons.forEach(function(b){b.addEventListener('click',function(){
 var k=b.getAttribute('data-sort');
 if(k===sort.key&&k!=='order')sort.desc=!sort.desc;else{sort.key=k;sort.desc=k!=='order';}
 apply();});});
controls.hidden=false;
var target=/^#s\d+$/.test(location.hash)&&document.getElementById(location.hash.slice(1));
apply();
if(target&&!target.hidden){target.open=true;target.scrollIntoView();}
})();
